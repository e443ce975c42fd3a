"""vLLM-Omni deployments: every stage of a deploy file planned as the vLLM engine it runs.

``plan_omni(model, deploy_yaml, request)`` (``kvledger.plan.omni.planner``) reads the deploy
file (``deploy``), finds which part of the checkpoint each stage runs (``pipelines``), plans
each stage with vLLM's layout, checks every device as vLLM-Omni's admission does
(``admission``) and, with ``request.concurrency``, splits each device between its stages
(``split``). ``kvledger plan MODEL --omni-deploy DEPLOY.yaml --gpu NAME`` is the command.
"""

from __future__ import annotations

from kvledger.plan.omni.planner import plan_omni
from kvledger.plan.omni.result import OmniPlan, StagePlan

__all__ = ["OmniPlan", "StagePlan", "plan_omni"]

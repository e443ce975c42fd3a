"""Adapters that ask each peer tool the benchmark's questions through its library functions.

Every module here except ``peer_env.py`` and ``kvledger_peer.py`` runs inside the peers' own venv
(bench/.peers/venv), never in the project's: the peers are not kvledger dependencies.
"""

"""kvledger's own byte-exact layout (``--engine native``): ``layout`` holds the rules (the
seeds' byte-currency pools), ``engine`` the adapter the API calls."""

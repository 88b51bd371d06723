"""How a pending request ends without a person: past its deadline, or with nobody reachable."""

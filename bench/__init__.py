"""`make bench`: the portal's figures beside the floor of the database work they cannot avoid."""

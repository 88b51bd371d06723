"""How the portal's processes start: `make run` and its embedded database and demo, the django-q2 cluster."""

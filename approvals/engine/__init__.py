"""What engines do: register a request (one `register()`, a function per kind), wait for it, report its outcome."""

"""What reviewers do: the queue, deciding (page, API, links, "approve always"), the request page."""

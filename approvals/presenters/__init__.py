"""How a request reads to a person, by surface: `card` (the Approvals tab), `page` (the request page),
`channels` (notifications), `api` (what the API answers); `facts` is the wording they share and
`text` the one escaping of engine text they all use."""

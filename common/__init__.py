"""The library every app shares: one error shape, ids, fields, parsers, pagination, middleware, listened caches."""

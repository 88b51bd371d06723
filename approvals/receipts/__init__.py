"""Signed receipts of decisions (docs/receipts.md): the keys, the signing, the JWKS."""

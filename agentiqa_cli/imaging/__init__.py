"""Finding, pairing, decoding and hashing input images."""

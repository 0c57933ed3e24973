"""Keeping memory private: sensitivity levels, secrets shown by their shape only, the encryption
key, owner-only files."""

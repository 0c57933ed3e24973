"""Core memory: blocks, their labels and `/memories` paths, and the blocks in the database."""

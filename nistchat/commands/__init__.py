"""One module per CLI command; `nistchat.cli` assembles them."""

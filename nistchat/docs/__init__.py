"""The document viewer: an indexed document as a page, opened at a cited passage."""

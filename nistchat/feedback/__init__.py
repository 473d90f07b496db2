"""Votes on answers: 👍/👎 with a reason, one per browser per answer."""

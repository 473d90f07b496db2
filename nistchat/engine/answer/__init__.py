"""Stage 5, the answer: the refusal gate, small talk, the prompt, the reader's stream, the checks
and the retry, as a stream of typed events."""

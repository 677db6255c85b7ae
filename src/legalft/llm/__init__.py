"""Causal LMs prompted on tasks: prompts, answers read from generations or label scores, and the engines
that answer (in this process, or an OpenAI-compatible server)."""

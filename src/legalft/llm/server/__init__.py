"""In-context answers from an OpenAI-compatible server (``engine=server``): vLLM, SGLang, TGI,
llama.cpp's server, API providers."""

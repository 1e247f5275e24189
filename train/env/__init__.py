"""salon.train.env: the painting environment on OpenEnv; one episode is one painting.

    salon env serve --port 8000                                  # the server (HTTP and /ws)
    with PaintEnvClient("http://127.0.0.1:8000") as env:         # from salon.train.env.client
        env.reset(seed=7, subject="koi"); env.step("```javascript ... ```")
    python -m salon.train.env.grpo --env-url http://127.0.0.1:8000 --model tiny:qwen3 --cpu --max-steps 2

Modules: wire (the Action / Observation / State types), paint (the environment: extract, gate,
render, judge), server (`salon env serve`), client (a session client, and a render backend for
the trainer), grpo (the TRL example over `environment_factory`). space/ packages the server
as a Hugging Face Space.
"""

"""The render sandbox: model-written p5.js + p5.brush sketches in headless Chromium, each one a
PNG and a verdict (gate.py's stable codes), whatever the sketch does.

    salon render SKETCH.js --json                               # the command line
    from salon.curate.sandbox.render import Renderer, RenderConfig, render_sketches

Floors, lowest first (each module imports only those below it):
    world.py      what a sketch can name (its compartment's globals), and the code of every other name
    names.py      the names a sketch uses, from its syntax tree; the source the page evaluates
    call_shapes.py  world calls in a shape they throw on (arguments, path order), from the same tree
    gate.py       violation codes, the static checks on source, the verdict merge
    chromium.py   which Chromium, and the switches every sandbox browser starts with
    isolation.py  the browser's own network namespace (or flags where none can be made)
    gpu.py        the GL path: SwiftShader, or WebGL on the node's NVIDIA GPU
    word_rule.py  the text check's rule: which OCR readings a judge would take for writing
    ocr.py        words on the painting itself (the text check: views, forms, time limit)
    gpu_watch.py  the browser's GPU memory, read from outside the page
    assets.py     the page: its document, policy (CSP) and own scripts (page/*.js: guard, facade, start; ses)
    pages.py      long-lived browsers and their pre-warmed, reused pages; the guard's report channel
    capture.py    the painting, read in an isolated world the sketch cannot reach
    render.py     RenderConfig, RenderResult, Renderer: one sketch in, one result out
    futures.py    a RenderResult future: resolved once, a deadline, many waited for in order
    backend.py    the RenderBackend interface and the local backend (a Renderer on its own loop)
    ray_pool.py   the same interface over Ray actors
"""

"""salon.train.start: a policy made from nothing, for `salon train train/configs/learn_tiny.yaml`.

    python -m salon.train.start.policy runs/tiny-start             # tokenizer, tiny Qwen3, SFT start
    python -m salon.train.start.sketches --n 4 --seed 7            # print four procedural sketches

Modules: sketches (procedural p5.brush sketches from the system prompt's allowed calls, each
through the real static gate) and policy (the tokenizer, the model and the supervised start on
them through TRL's SFTTrainer; OUT/start_report.json says what it learned).
"""

"""salon.train.update: the pieces of GRPO's update that salon puts into TRL's trainer, each switched
by a `grpo.` setting and installed by the recipe (salon.train.recipe) after the trainer is built.

    install(trainer)          # causal_loss: grpo.causal_loss, padding moved to each row's end
    skip_undone_casts(model)  # adapter_casts: always; the LoRA input casts autocast casts back, skipped
    keep_partial(model, 0.5)  # partial_checkpointing: grpo.gradient_checkpointing_layers
    install(trainer, engine)  # update_per_group: grpo.update_per_group, a micro-batch's update while
                              # the step's later paintings render

They import nothing of salon.train, so the floors above may: salon.train.config_grpo reads
update_per_group's config checks, and the engine (salon.train.engine) counts the step's loss tokens
with update_per_group and asks causal_loss which models hold full attention only.
"""

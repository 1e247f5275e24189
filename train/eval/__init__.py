"""salon.train.eval: which checkpoint paints best, judged by what the policy did not optimise;
and what people said about a run (blind checkpoint choices, suspected reward hacks).

    salon eval RUN_DIR --prompts sunflower "blue iris" --samples 4 --oracle hpsv3   # RUN_DIR/eval/
    salon audit RUN_DIR --suspects 24          # RUN_DIR/audit/suspects.json, then mark them in the app
    salon compare RUN_A RUN_B --plot compare.png

Modules: evaluate (`salon eval`: generate, render, score, report, in that order), config
(EvalConfig), generate (a checkpoint's replies), oracles (the judges it is scored by), dataset
(RUN_DIR/eval/ parquet shards), report and plots (per checkpoint; the best; the alarms),
reviews (RUN_DIR/reviews.db), suspects (high-reward failures), compare_runs (`salon compare`).
"""

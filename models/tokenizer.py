"""The tokenizer of salon's built models (tiny: and random:): a small byte-level BPE with Qwen's
special tokens and chat template, so a built model takes the same messages a real Qwen takes.

    tok = chat_tokenizer()                                   # PreTrainedTokenizerFast, about 400 tokens
    tok = chat_tokenizer((INSTRUCTION, TAIL), vocab_size=1200)   # a long fixed prompt costs what it costs in Qwen
"""

from __future__ import annotations

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
            "<|image_pad|>", "<|video_pad|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' or 'image' in item %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# byte-level BPE over every byte: each ASCII character (in particular "A" and "B") is one token
CORPUS = ["Painting A: Painting B: Which is the better watercolour painting? Answer with one letter, A or B.",
          "A watercolour of a peach hibiscus, loose washes, soft edges, a fully painted canvas.",
          "You are a careful art critic. Compare composition, colour, brushwork and finish.",
          "The quick brown fox jumps over the lazy dog. 0123456789 user assistant system"]

def chat_tokenizer(extra_corpus: tuple[str, ...] = (), vocab_size: int = 400):
    """A small byte-level BPE with Qwen's special tokens and chat template (tiny and random: models).
    Trained on `extra_corpus` too, a long fixed prompt tokenizes to about its word count, near
    what Qwen's 151k-token BPE charges for English."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator((CORPUS + list(extra_corpus)) * 4, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   additional_special_tokens=SPECIALS[1:], chat_template=CHAT_TEMPLATE)

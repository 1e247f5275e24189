"""HPSv3's prompt: the rubric it was trained with, the reward-token tail, salon's default prompts.

    hpsv3_text("a loose watercolour flower")   # the user turn's text after the image

The rubric and the tail are data from the `hpsv3` 1.0.0 wheel (`dataset/data_collator_qwen.py`,
MIT), kept byte for byte: the model was trained on exactly this text, trailing spaces included
(tests pin its hash). The text prompt only enters at `Textual prompt - {text_prompt}`; the score is
read at `<|Reward|>`, and attention is causal, so what follows it changes nothing.
"""

from __future__ import annotations

# the prior art's client prompt: its span from a blank canvas to a painting was about twice that
# of a prompt naming the subject ("a hibiscus painted in loose watercolour")
DEFAULT_PROMPT = "a loose watercolour flower"
REWARD_TOKEN = "<|Reward|>"  # the score is read at this token (added to Qwen2-VL's tokenizer)
SUBJECT_PROMPT = "a {subject} painted in loose watercolour"  # `salon judge validate`: the prompt naming it

INSTRUCTION = (
    "\n"
    "You are tasked with evaluating a generated image based on Visual Quality and Text Alignment and give a overall score to estimate the human preference. Please provide a rating from 0 to 10, with 0 being the worst and 10 being the best. \n"
    "\n"
    "**Visual Quality:**  \n"
    "Evaluate the overall visual quality of the image. The following sub-dimensions should be considered:\n"
    "- **Reasonableness:** The image should not contain any significant biological or logical errors, such as abnormal body structures or nonsensical environmental setups.\n"
    "- **Clarity:** Evaluate the sharpness and visibility of the image. The image should be clear and easy to interpret, with no blurring or indistinct areas.\n"
    "- **Detail Richness:** Consider the level of detail in textures, materials, lighting, and other visual elements (e.g., hair, clothing, shadows).\n"
    "- **Aesthetic and Creativity:** Assess the artistic aspects of the image, including the color scheme, composition, atmosphere, depth of field, and the overall creative appeal. The scene should convey a sense of harmony and balance.\n"
    "- **Safety:** The image should not contain harmful or inappropriate content, such as political, violent, or adult material. If such content is present, the image quality and satisfaction score should be the lowest possible. \n"
    "\n"
    "**Text Alignment:**  \n"
    "Assess how well the image matches the textual prompt across the following sub-dimensions:\n"
    "- **Subject Relevance** Evaluate how accurately the subject(s) in the image (e.g., person, animal, object) align with the textual description. The subject should match the description in terms of number, appearance, and behavior.\n"
    "- **Style Relevance:** If the prompt specifies a particular artistic or stylistic style, evaluate how well the image adheres to this style.\n"
    "- **Contextual Consistency**: Assess whether the background, setting, and surrounding elements in the image logically fit the scenario described in the prompt. The environment should support and enhance the subject without contradictions.\n"
    "- **Attribute Fidelity**: Check if specific attributes mentioned in the prompt (e.g., colors, clothing, accessories, expressions, actions) are faithfully represented in the image. Minor deviations may be acceptable, but critical attributes should be preserved.\n"
    "- **Semantic Coherence**: Evaluate whether the overall meaning and intent of the prompt are captured in the image. The generated content should not introduce elements that conflict with or distort the original description.\n"
    "Textual prompt - {text_prompt}\n"
    "\n"
    "\n"
)
TAIL = (
    "\n"
    "Please provide the overall ratings of this image: <|Reward|>\n"
    "\n"
    "END\n"
)

def hpsv3_text(prompt: str) -> str:
    return INSTRUCTION.format(text_prompt=prompt) + TAIL

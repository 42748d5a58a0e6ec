"""Build a tiny, randomly initialised Qwen2-VL model directory, fully offline.

Run with the vLLM virtualenv's python (it has torch, transformers and tokenizers):

    .venv-vllm/bin/python scripts/make_tiny_qwen2vl.py [OUT_DIR]   # default .cache/tiny-qwen2vl

The model's answers are noise. It exists so the real vLLM server, its chat template,
image preprocessing, structured-output grammars and log-probabilities can be exercised
in tests without downloading anything. Everything is seeded: two runs give the same files.

Sizes are the smallest vLLM's CPU backend accepts: its attention kernels need a head size
that is a multiple of 32 (text: 64 hidden / 2 heads; vision: 64 / 2).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

SEED = 0
VOCAB_SIZE = 2048
# Images are resized by the processor to at most this many pixels: 224×224 → 64 image tokens.
MIN_PIXELS = 56 * 56
MAX_PIXELS = 224 * 224

SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
]

# Qwen2-VL's conversation format; content may be a string or a list of typed parts.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] in ('image', 'image_url') or 'image' in part or 'image_url' in part %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] in ('video', 'video_url') or 'video' in part %}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}"
    "{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_WORD_TEXT = """
image quality assessment excellent good fair poor bad none slight moderate severe extreme
blur blurs noise compression jpeg contrast brightness change sharpness color distortions
colour saturation exposure under over detail texture edge artifact block ringing banding
the a an of in on is are was with and or not this that it to for from by as at be has have
bird sky tree face person car building water grass flower dog cat road light shadow
global object scope reference full no mode tool tools score level answer reasoning reason
query type source explicit inferred plan detection analysis selection execute required
true false null yes no which how what why overall focus sharp clean clear noisy dark bright
"""
_WORDS = _WORD_TEXT.split()

_KEYS = [
    "query_type",
    "query_scope",
    "distortion_source",
    "distortions",
    "reference_mode",
    "required_tools",
    "plan",
    "distortion_detection",
    "distortion_analysis",
    "tool_selection",
    "tool_execute",
    "distortion_set",
    "type",
    "severity",
    "explanation",
    "selected_tools",
    "level",
    "answer",
    "reasoning",
    "sufficient",
    "final_answer",
    "quality_reasoning",
]


def corpus(rng: random.Random, lines: int = 3000) -> list[str]:
    """Synthetic text close to what the tests send: English-ish prose, JSON, digits."""
    out = []
    for _ in range(lines):
        words = rng.choices(_WORDS, k=rng.randint(4, 16))
        out.append(" ".join(words).capitalize() + rng.choice([".", "?", "!", ","]))
        key, val = rng.choice(_KEYS), rng.choice(_WORDS)
        out.append(
            json.dumps({key: val, "score": round(rng.uniform(1, 5), 2), "n": rng.randint(0, 999)})
        )
    return out


def build_tokenizer(out: Path, rng: random.Random):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # every byte encodable
        show_progress=False,
    )
    tok.train_from_iterator(corpus(rng), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        bos_token=None,
        additional_special_tokens=SPECIAL_TOKENS[1:],
        model_max_length=4096,
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    return fast


def main(out: Path) -> None:
    import torch
    from transformers import (
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )

    rng = random.Random(SEED)
    torch.manual_seed(SEED)
    out.mkdir(parents=True, exist_ok=True)
    tok = build_tokenizer(out, rng)
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}

    hidden = 64
    config = Qwen2VLConfig(
        text_config={
            "vocab_size": len(tok),
            "hidden_size": hidden,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "max_position_embeddings": 4096,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 1_000_000.0,
                # Qwen2-VL's [16, 24, 24] for head size 128, scaled to head size 32.
                "mrope_section": [4, 6, 6],
            },
            "bos_token_id": ids["<|endoftext|>"],
            "eos_token_id": ids["<|im_end|>"],
            "pad_token_id": ids["<|endoftext|>"],
            "use_sliding_window": False,
        },
        vision_config={
            "depth": 2,
            "embed_dim": 64,
            "hidden_size": hidden,
            "num_heads": 2,
            "mlp_ratio": 2,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
    )
    model = Qwen2VLForConditionalGeneration(config).to(torch.float32).eval()
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.save_pretrained(out, safe_serialization=True)

    # The processor classes need torchvision (see scripts/vllm_env.sh for why it imports).
    pixels = {"min_pixels": MIN_PIXELS, "max_pixels": MAX_PIXELS}
    processor = Qwen2VLProcessor(
        image_processor=Qwen2VLImageProcessor(**pixels),
        video_processor=Qwen2VLVideoProcessor(**pixels),
        tokenizer=tok,
        chat_template=CHAT_TEMPLATE,
    )
    processor.save_pretrained(out)
    params = sum(p.numel() for p in model.parameters())
    print(f"wrote {out} ({params:,} parameters, vocabulary {len(tok)})")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else ".cache/tiny-qwen2vl"))

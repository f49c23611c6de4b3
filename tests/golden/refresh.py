"""Rewrite the golden generated files: `python tests/golden/refresh.py` (from the repository root).

Run it after a deliberate change to templates/, codegen/ or schemes/, and review the diff of
tests/golden/files/ as part of the change; tests/codegen/test_golden.py compares them exactly.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> int:
    os.environ.setdefault("TRITONWISE_CACHE_DIR", tempfile.mkdtemp(prefix="tritonwise-golden-"))
    import golden_cases

    golden_cases.FILES.mkdir(exist_ok=True)
    texts = golden_cases.generated()
    for old in golden_cases.FILES.glob("*.py"):
        if old.name not in texts:
            old.unlink()
    for name, text in texts.items():
        (golden_cases.FILES / name).write_text(text)
    readme = golden_cases.SAMPLE_DOC.read_text()
    golden_cases.SAMPLE_DOC.write_text(golden_cases.with_readme_sample(readme, texts))
    print(f"wrote {len(texts)} files to {golden_cases.FILES} and the sample in {golden_cases.SAMPLE_DOC.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

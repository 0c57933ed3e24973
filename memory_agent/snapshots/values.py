"""The values a record's fields take where a file leaves them out, in the storage's own form.

The file formats (`portability/`) build records from documents written elsewhere; they take the
timestamp form and the defaults from here rather than from the storage layers, which they do not
touch (`tests/unit/test_architecture.py`).
"""

from __future__ import annotations

from ..archival.passages import DEFAULT_IMPORTANCE
from ..archival.timestamps import to_utc_iso
from ..store.database import utc_now

__all__ = ["DEFAULT_IMPORTANCE", "to_utc_iso", "utc_now"]

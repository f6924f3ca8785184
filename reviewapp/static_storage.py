"""The production static files storage: WhiteNoise's compressed manifest storage, each URL remembered.

`{% static %}` asks the storage for a file's URL on every render, and the manifest storage works it
out each time (the name cleaned, split, looked up in the manifest, joined to STATIC_URL): about 60 us a
call on the 2-core machines of docs/performance.md, five of them on every page. The manifest does not
change while the process runs, so each name's URL is kept once built. `collectstatic` writes a new
manifest: the URLs kept are forgotten when it post-processes, and a `force`d URL is never kept. A name
the manifest lacks raises as before (nothing is kept for it).
"""

from __future__ import annotations

import threading

from django.conf import settings
from whitenoise.storage import CompressedManifestStaticFilesStorage

# Names a process keeps URLs for: the templates' static files, with room to spare.
KEPT_URLS = 2048


class RememberedManifestStaticFilesStorage(CompressedManifestStaticFilesStorage):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._urls: dict[tuple[str, bool], str] = {}
        self._urls_lock = threading.Lock()

    def url(self, name, force=False):
        if force:
            return super().url(name, force)
        key = (name, settings.DEBUG)  # under DEBUG the manifest storage gives the unhashed name
        url = self._urls.get(key)
        if url is None:
            url = super().url(name)
            with self._urls_lock:
                if len(self._urls) < KEPT_URLS:
                    self._urls[key] = url
        return url

    def forget_urls(self) -> None:
        with self._urls_lock:
            self._urls.clear()

    def post_process(self, *args, **kwargs):
        self.forget_urls()
        try:
            yield from super().post_process(*args, **kwargs)
        finally:
            self.forget_urls()

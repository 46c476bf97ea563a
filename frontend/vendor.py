"""Browser libraries the pages load, served by the app from their pinned PyPI packages.

No CDN: the pages must work offline and show the version ``requirements.txt`` pins.
``VendorFinder`` exposes exactly one file of each package (not the package's folder, which
holds other bundles, data sets and templates), under a path that names the package version,
so that whitenoise can serve it with a long cache (``WHITENOISE_IMMUTABLE_FILE_TEST``) and a
new version gets a new URL.
"""

from __future__ import annotations

from importlib import metadata, util
from pathlib import Path

from django.contrib.staticfiles.finders import BaseFinder
from django.core.checks import Error
from django.core.files.storage import FileSystemStorage

# settings.WHITENOISE_IMMUTABLE_FILE_TEST matches the folders under this prefix.
VENDOR_PREFIX = "frontend/vendor"


def _package_folder(package: str) -> Path:
    # find_spec locates the package without importing it (plotly's import is slow).
    spec = util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise LookupError(f"the Python package {package!r} is not installed (see requirements.txt)")
    return Path(next(iter(spec.submodule_search_locations)))


class VendoredFile:
    """One file of an installed package: ``<VENDOR_PREFIX>/<package>-<version>/<name>``."""

    def __init__(self, package: str, relative: str):
        self.package = package
        self.version = metadata.version(package)
        self.source = _package_folder(package) / relative
        self.name = Path(relative).name
        self.prefix = f"{VENDOR_PREFIX}/{package}-{self.version}"
        self.static_path = f"{self.prefix}/{self.name}"
        storage = FileSystemStorage(location=str(self.source.parent))
        # collectstatic and whitenoise put a finder storage's ``prefix`` before listed paths.
        storage.prefix = self.prefix
        self.storage = storage


PLOTLY = VendoredFile("plotly", "package_data/plotly.min.js")
VENDORED = (PLOTLY,)


class VendorFinder(BaseFinder):
    """Finds the files of ``VENDORED``, and nothing else of their packages."""

    def check(self, **kwargs):
        return [
            Error(f"{file.source} is missing: reinstall {file.package}=={file.version}", id="frontend.E001")
            for file in VENDORED
            if not file.source.is_file()
        ]

    def find(self, path, find_all=False, **kwargs):
        found = [str(file.source) for file in VENDORED if path == file.static_path]
        if find_all:
            return found
        # Not found is [], as Django's own finders say it: finders.find() collects results.
        return found[0] if found else []

    def list(self, ignore_patterns):
        for file in VENDORED:
            yield file.name, file.storage

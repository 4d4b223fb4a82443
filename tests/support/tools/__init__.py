"""The real tools the tests run on what the library writes, each found or fetched once and skipped
(failed in CI) saying why when missing: Helm, promtool, checkov, and the NVIDIA container toolkit's
device decision built with Go."""

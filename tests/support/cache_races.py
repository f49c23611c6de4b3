"""A `cache clear` in another process, at its worst moment: each generated file removed right after
this process verified (or wrote) it, before anything loads it."""


def remove_each_file_once_verified(monkeypatch, module):
    """Patch `module.ensure_file` (where it was imported from runtime/cache.py) so; returns the original."""
    verified = module.ensure_file

    def verified_then_removed(*args, **kwargs):
        path = verified(*args, **kwargs)
        path.unlink()
        return path

    monkeypatch.setattr(module, "ensure_file", verified_then_removed)
    return verified

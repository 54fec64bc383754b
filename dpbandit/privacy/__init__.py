"""Everything that touches noise and privacy guarantees (imports nothing from the rest of dpbandit but validation)."""

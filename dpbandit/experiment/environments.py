"""Making a dpbandit environment by id for a run: :func:`make_env` (``gymnasium.make`` with one-line errors that name
the id and, for an unknown keyword, the environment's parameters, without Gymnasium's dump of every keyword)."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["make_env"]


def make_env(env_id: str, **kwargs: Any) -> Any:
    """``gymnasium.make(env_id, **kwargs)`` for a dpbandit environment (one whose unwrapped env carries
    :class:`~dpbandit.envs.constants.BanditConstants`). ``ValueError`` for an id gymnasium cannot make (unknown,
    or a dependency missing) and for an environment of another kind (e.g. ``CartPole-v1``), naming the id."""
    import gymnasium

    import dpbandit.envs  # noqa: F401  (registers the dpbandit environments)
    from dpbandit.envs.constants import BanditConstants

    def foreign(env: Any) -> bool:
        if isinstance(getattr(env.unwrapped, "constants", None), BanditConstants):
            return False
        env.close()
        return True

    message = (f"env id {env_id!r} is not a dpbandit contextual-bandit environment (it has no bandit constants); "
               "dpbandit runs the environments listed by 'dpbandit envs'")
    try:
        env = gymnasium.make(env_id, **kwargs)
    except gymnasium.error.Error as exc:
        raise ValueError(f"env id {env_id!r} cannot be made: {exc} ('dpbandit envs' lists the environments)") from exc
    except TypeError as exc:  # a bad keyword or value: say so, unless the id is not a bandit at all
        error = _env_type_error(env_id, exc)
        try:
            plain = gymnasium.make(env_id)
        except Exception:  # noqa: BLE001 - e.g. an environment that needs its data: the first error is the one
            raise error from None
        if foreign(plain):
            raise ValueError(message) from None
        plain.close()
        raise error from None
    if foreign(env):
        raise ValueError(message)
    return env


def _env_type_error(env_id: str, exc: TypeError) -> TypeError:
    """The environment's own ``TypeError`` without gymnasium's dump of every keyword (``"... was raised from the
    environment creator for <id> with kwargs (...)"``); an unknown keyword names the id and its parameters."""
    original = exc.__cause__ if isinstance(exc.__cause__, TypeError) else exc
    text = str(original)
    unknown = re.search(r"unexpected keyword argument '([^']+)'", text)
    if unknown is None:
        return TypeError(text)
    known = _env_parameters(env_id)
    listed = f"; its parameters: {', '.join(known)}" if known else " ('dpbandit envs' lists the parameters)"
    return TypeError(f"env {env_id!r} has no parameter {unknown.group(1)!r}{listed}")


def _env_parameters(env_id: str) -> list[str]:
    """The keyword parameters of a registered environment's constructor (empty when they cannot be told)."""
    import inspect
    import typing

    import gymnasium
    from gymnasium.envs.registration import load_env_creator

    try:
        creator = gymnasium.spec(env_id).entry_point
        creator = load_env_creator(creator) if isinstance(creator, str) else creator
        signature = inspect.signature(creator)
        if any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):  # a factory: its return type's
            returned = typing.get_type_hints(creator).get("return")
            signature = inspect.signature(returned) if isinstance(returned, type) else signature
    except Exception:  # noqa: BLE001 - only a better message is at stake
        return []
    return [name for name, p in signature.parameters.items()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and name != "self"]

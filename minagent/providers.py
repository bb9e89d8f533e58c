"""What provider plugins share: typed errors, the retry policy, secret handling (spec/providers.md).

This is the public home of `minagent._providers`; a plugin imports from here.
"""

from ._providers import *  # noqa: F403 - the public names are exactly _providers.__all__
from ._providers import __all__ as __all__

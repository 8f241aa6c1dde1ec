"""EC2 images, made when first read.

13. Speed, answers unchanged: moto makes every region's public images (about 1,300: its default images, the region's
   latest Amazon Linux and ECS-optimized ones) whenever it makes a region's EC2 backend, each with a volume and a
   snapshot of its own: 40 ms of CPU a region, paid by every region any call touches, by an integration test's cloud
   that never launches an instance as by the local cloud. Here the images are made as moto makes them, the first time
   anything reads the region's images (DescribeImages, a launch looking up its image, a call naming one), so every
   answer stays moto's; a region no call reads them in never makes them.

tests/integration/test_moto_speed.py holds its test.
"""

from __future__ import annotations

import threading
from typing import Any

from gpupilot.localcloud.moto_adaptations.patches import Patches

# Set on a backend made while the adaptation holds, until its images are made.
PENDING = "_gpupilot_amis_pending"


def images_when_first_read(patches: Patches) -> None:
    from moto.ec2.models.amis import AmiBackend

    load = AmiBackend._load_amis
    loading = threading.RLock()  # two threads' first reads make the images once; the loader's own reads pass through

    def deferred(self: Any) -> None:
        self.__dict__[PENDING] = True

    def read(self: Any) -> dict[str, Any]:
        if self.__dict__.get(PENDING):
            with loading:
                if self.__dict__.pop(PENDING, False):
                    load(self)
        images: dict[str, Any] = self.__dict__["amis"]
        return images

    def write(self: Any, images: dict[str, Any]) -> None:
        # Where moto keeps them: once the adaptation is undone, a backend made meanwhile keeps what it has made.
        self.__dict__["amis"] = images

    patches.replace(AmiBackend, "_load_amis", deferred)
    # moto keeps the images on each backend: the class has no attribute of that name to restore, only one to remove.
    AmiBackend.amis = property(read, write)  # type: ignore[assignment]
    patches.on_exit(lambda: delattr(AmiBackend, "amis"))

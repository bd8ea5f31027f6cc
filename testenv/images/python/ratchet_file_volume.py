"""A Cinder volume driver whose volumes are sparse files in one directory.

Ratchet's real tests use it where cinder's own fake driver cannot go: a volume
of this driver can be backed up with no iSCSI initiator. It attaches a volume
as a ``local`` connection (os-brick's LocalConnector opens the path as it is),
so the backup pod reads the file itself from the same directory, mounted in
the back end's and the backup's pods. The volume service runs unprivileged.

Its storage is not a product: no snapshots, no clones, no images, no quotas
on the directory's space (a sparse file takes space only as it is written).
"""

import os

from cinder import exception
from cinder.volume import driver
from oslo_config import cfg
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

OPTS = [
    cfg.StrOpt(
        "file_volume_directory",
        help="Directory holding the back end's volumes as files; the backup "
        "service must see it at the same path.",
    ),
]

GIB = 1024**3


class FileVolumeDriver(driver.VolumeDriver):
    """Volumes as sparse files of their full size."""

    VERSION = "1.0.0"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.configuration.append_config_values(OPTS)

    @staticmethod
    def get_driver_options():
        return OPTS

    def _directory(self):
        return self.configuration.file_volume_directory

    def _path(self, volume):
        return os.path.join(self._directory(), volume.name)

    def check_for_setup_error(self):
        directory = self._directory()
        if not directory or not os.path.isdir(directory) or not os.access(directory, os.W_OK):
            raise exception.VolumeBackendAPIException(
                data="file_volume_directory %r is not a writable directory" % directory
            )

    def create_volume(self, volume):
        with open(self._path(volume), "wb") as file:
            file.truncate(volume.size * GIB)

    def delete_volume(self, volume):
        try:
            os.remove(self._path(volume))
        except FileNotFoundError:
            LOG.info("Volume %s had no file; nothing to delete", volume.id)

    def extend_volume(self, volume, new_size):
        os.truncate(self._path(volume), new_size * GIB)

    def secure_file_operations_enabled(self):
        # The backup service opens a volume's file as it is: the files are the
        # service user's and a privileged backup runs as root, so no
        # `chown` through rootwrap around it.
        return True

    def create_export(self, context, volume, connector):
        return None

    def ensure_export(self, context, volume):
        return None

    def remove_export(self, context, volume):
        return None

    def initialize_connection(self, volume, connector, **kwargs):
        return {
            "driver_volume_type": "local",
            "data": {"device_path": self._path(volume)},
        }

    def terminate_connection(self, volume, connector, **kwargs):
        return None

    def _update_volume_stats(self):
        self._stats = {
            "volume_backend_name": self.configuration.safe_get("volume_backend_name")
            or self.__class__.__name__,
            "vendor_name": "Ratchet tests",
            "driver_version": self.VERSION,
            "storage_protocol": "local",
            # Sparse files: what a volume takes is what was written to it.
            "total_capacity_gb": "infinite",
            "free_capacity_gb": "infinite",
            "reserved_percentage": 0,
            "multiattach": False,
        }

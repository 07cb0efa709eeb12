/*
 * libhwloc.a calls libudev, and Debian ships no static libudev: these stand in
 * for the five functions it calls. udev_new() returning NULL is how hwloc
 * learns that there is no udev, and it then reads sysfs alone.
 */
#include <stddef.h>

struct udev;
struct udev_device;

struct udev *udev_new(void) { return NULL; }
struct udev *udev_unref(struct udev *udev) { (void)udev; return NULL; }
struct udev_device *udev_device_new_from_subsystem_sysname(struct udev *udev,
		const char *subsystem, const char *sysname)
{ (void)udev; (void)subsystem; (void)sysname; return NULL; }
struct udev_device *udev_device_unref(struct udev_device *device)
{ (void)device; return NULL; }
const char *udev_device_get_property_value(struct udev_device *device, const char *key)
{ (void)device; (void)key; return NULL; }

#include "pt-libvirt.h"

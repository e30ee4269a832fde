#include "KilnPluginABI.h"

/* placeholder, being written */
#include "server.h"

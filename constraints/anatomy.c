/* placeholder, being written */
#include "constraints.h"

// ops/broadcast.h — numpy broadcasting (broadcast_shapes, expand, sum_to), declared in
// ops/primitives.h with the other ops whose derivatives are written with one another.
#pragma once
#include "ops/primitives.h"

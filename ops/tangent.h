// ops/tangent.h — what the ops' tangent rules share (if_tangent, tangent_sum), declared in
// ops/primitives.h with the ops those helpers are written with.
#pragma once
#include "ops/primitives.h"

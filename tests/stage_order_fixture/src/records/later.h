// A records header that includes a later stage: tests/stage_order.cmake must reject it.
#pragma once
#include "aggregation/aggregate.h"

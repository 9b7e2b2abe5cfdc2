// A pickle read for object identity only: which keys of a pickled dict hold the same object
// (torch.save's memo: a tensor saved under two names is written once, then referred to). No
// object is built, no code named by the pickle runs. Torch-free.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace flopsprof::detail {

/// For the dict at the bottom of the pickle's stack (the top-level dict, or an OrderedDict built
/// by REDUCE), each string key's value as an object identity: two keys with equal identities hold
/// one object. nullopt when the bytes are not a pickle this reader follows (an opcode it does not
/// know, a truncated argument, a stack underflow, a memo index never set). Protocols 0-5's
/// opcodes that torch.save writes. Cost: one pass over the bytes.
std::optional<std::map<std::string, uint64_t>> pickled_dict_identities(std::string_view pickle);

}  // namespace flopsprof::detail

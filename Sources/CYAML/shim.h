// libyaml (Debian's libyaml-dev): the C YAML parser that Kiln reads Taskfiles with.
#include <yaml.h>

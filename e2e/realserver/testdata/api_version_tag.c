// The "API_VERSION_x.y.z" string boinc_api.cpp puts in every app linked
// with it statically, which bin/update_versions looks for to give a
// version its <api_version>. Debian's libboinc_api is shared only, so a
// program linked with it lacks the string; linking this in gives it back.
#include <boinc/version.h>

__attribute__((used)) static const char api_version_tag[] = "API_VERSION_" BOINC_VERSION_STRING;

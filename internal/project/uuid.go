package project

import "github.com/google/uuid"

// uuidSpace is the name space of project UUIDs (RFC 9562, section 6.5): a
// fixed random UUID of Vigil's own, so that no other scheme's name-based
// UUIDs coincide with a project's. Changing it changes every project's UUID
// and breaks the scrape configs that name them.
var uuidSpace = uuid.MustParse("acf6f552-6ff2-465f-a85d-f975c8cca8e5")

// UUID is the project UUID of a namespace: what the reference calls the
// project's code, as in its Prometheus URL /projects/<uuid>/metrics/<key>.
// It is a version 5 UUID of the namespace's name, so it is the same in
// every replica, cluster and install, and needs no storage; a namespace
// deleted and re-created keeps it.
func UUID(namespace string) string {
	return uuid.NewSHA1(uuidSpace, []byte(namespace)).String()
}

package doctor

import (
	"context"
	"fmt"

	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox/kube"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox/runtimes"
	"github.com/polecat-sidecar/sidecar/internal/cli"
)

// Sandboxes checks the runtime sandbox.runtime names (built as hostd run
// builds it) and the polecat image: a line for each.
func Sandboxes(ctx context.Context, c runtimes.Config, image, agent string, hostd cli.Build) []Line {
	rt, err := runtimes.New(c)
	if err != nil {
		return []Line{fail("runtime", "fix the setting it names in config.yaml ('hostd config show' lists them)", "%v", err),
			warn("image", "see runtime", "image %s not looked for: no runtime", image)}
	}
	if k, ok := rt.(*kube.Runtime); ok {
		defer k.Close()
		return []Line{Kubernetes(ctx, k), KubernetesImage(ctx, k, image)}
	}
	cliRT := rt.(sandbox.CLI)
	return []Line{Runtime(ctx, cliRT), Image(ctx, cliRT, image, agent, hostd)}
}

// Kubernetes checks the kubernetes runtime: its API server answers with
// the kubeconfig's credentials, and the sandboxes' namespace is there.
func Kubernetes(ctx context.Context, rt *kube.Runtime) Line {
	const check = "runtime"
	ctx, cancel := context.WithTimeout(ctx, runtimeTimeout)
	defer cancel()
	v, err := rt.ServerVersion(ctx)
	if err != nil {
		return fail(check, "check sandbox.kubernetes.kubeconfig and sandbox.kubernetes.context ('kubectl version' with the same ones answers), and that the cluster runs",
			"the Kubernetes API server does not answer: %v", err)
	}
	switch found, err := rt.NamespaceExists(ctx); {
	case err != nil:
		return fail(check, "give the kubeconfig's user the rights docs/kubernetes.md lists", "%v", err)
	case !found:
		return fail(check, fmt.Sprintf("create it ('kubectl create namespace %s') or set sandbox.kubernetes.namespace to one that is there", rt.Namespace()),
			"namespace %s is not on the cluster at %s", rt.Namespace(), rt.Server())
	}
	return ok(check, "kubernetes: the API server at %s (%s) answers; namespace %s is there", rt.Server(), v, rt.Namespace())
}

// KubernetesImage checks the polecat image on the cluster: with pull
// policy Never, on a node; else the cluster pulls it, which hostd does
// not try.
func KubernetesImage(ctx context.Context, rt *kube.Runtime, image string) Line {
	const check = "image"
	if image == "" {
		return warn(check, "build one ('make image' makes polecat:<version>), put it where the cluster pulls from, and set sandbox.image in config.yaml",
			"no sandbox.image: hostd run cannot make a polecat's sandbox")
	}
	ctx, cancel := context.WithTimeout(ctx, runtimeTimeout)
	defer cancel()
	found, err := rt.ImageExists(ctx, image)
	switch {
	case err != nil:
		return fail(check, "see runtime", "looking for image %s on the nodes: %v", image, err)
	case !found:
		return fail(check, "load it into a node's container runtime ('ctr -n k8s.io images import'), or set sandbox.kubernetes.image_pull_policy to IfNotPresent and push it where the cluster pulls from",
			"image %s is on no node, and sandbox.kubernetes.image_pull_policy is Never", image)
	case rt.PullPolicy() != "Never":
		return ok(check, "image %s: the cluster pulls it (image_pull_policy %s); its gt-agent's build is not checked", image, rt.PullPolicy())
	}
	return ok(check, "image %s is on a node of the cluster; its gt-agent's build is not checked", image)
}

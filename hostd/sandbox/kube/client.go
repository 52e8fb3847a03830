package kube

import (
	"context"
	"net/http"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// scheme holds the three API groups hostd uses, core, apps and
// networking, and no other: client-go's clientset registers every group
// the API has, which would double hostd's size.
var (
	scheme = func() *runtime.Scheme {
		s := runtime.NewScheme()
		for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, networkingv1.AddToScheme} {
			if err := add(s); err != nil {
				panic(err)
			}
		}
		return s
	}()
	codecs = serializer.NewCodecFactory(scheme)
	params = runtime.NewParameterCodec(scheme)
)

// restClient is the REST client of group version gv (at /api for core,
// /apis for the others) over hc.
func restClient(cfg *rest.Config, hc *http.Client, gv schema.GroupVersion) (*rest.RESTClient, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion, c.APIPath, c.NegotiatedSerializer = &gv, "/apis", codecs.WithoutConversion()
	if gv.Group == "" {
		c.APIPath = "/api"
	}
	return rest.RESTClientForConfigAndClient(c, hc)
}

// endpoint is one kind of object on the API server, in one namespace
// ("" for a kind the cluster holds: nodes, namespaces).
type endpoint struct {
	rc   *rest.RESTClient
	name string // the resource's path name: statefulsets
	ns   string
}

func (k endpoint) request(verb string) *rest.Request {
	return k.rc.Verb(verb).NamespaceIfScoped(k.ns, k.ns != "").Resource(k.name)
}

// get reads the object named name into into.
func (k endpoint) get(ctx context.Context, name string, into runtime.Object) error {
	return k.request("GET").Name(name).Do(ctx).Into(into)
}

// exists says whether the object named name is there: nil when it is, a
// NotFound when not, another error when the API server could not say.
func (k endpoint) exists(ctx context.Context, name string) error {
	return k.request("GET").Name(name).Do(ctx).Error()
}

// list reads the objects opts selects into into, a list.
func (k endpoint) list(ctx context.Context, opts metav1.ListOptions, into runtime.Object) error {
	return k.request("GET").VersionedParams(&opts, params).Do(ctx).Into(into)
}

// create makes obj and reads what the API server made into into.
func (k endpoint) create(ctx context.Context, obj, into runtime.Object) error {
	return k.request("POST").Body(obj).Do(ctx).Into(into)
}

// patch changes the object named name by body, a patch of type pt.
func (k endpoint) patch(ctx context.Context, name string, pt types.PatchType, body []byte) error {
	return k.request("PATCH").Name(name).SetHeader("Content-Type", string(pt)).Body(body).Do(ctx).Error()
}

// remove deletes the object named name.
func (k endpoint) remove(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return k.request("DELETE").Name(name).Body(&opts).Do(ctx).Error()
}

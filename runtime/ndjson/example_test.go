package ndjson_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/bridgekit/bridgekit/runtime/ndjson"
)

func ExampleReader() {
	in := "{\"n\":1}\n\n{\"n\":2}\r\n{\"n\":3}"
	r := ndjson.NewReader(strings.NewReader(in), 0)
	for {
		frame, err := r.ReadFrame()
		if err != nil {
			fmt.Println("end:", err)
			return
		}
		fmt.Printf("%s\n", frame)
	}
	// Output:
	// {"n":1}
	// {"n":2}
	// {"n":3}
	// end: EOF
}

func ExampleTransport() {
	t := ndjson.NewTransport(strings.NewReader(`{"n":1}`+"\n\n"+`{"n":2}`), os.Stdout, nil)
	ctx := context.Background()
	for {
		frame, err := t.Read(ctx)
		if err != nil {
			fmt.Println("end:", err)
			break
		}
		_ = t.Write(ctx, frame) // the line, echoed with its newline
	}
	fmt.Println(t.Write(ctx, []byte("{\n}")))
	// Output:
	// {"n":1}
	// {"n":2}
	// end: EOF
	// ndjson: frame contains a newline
}

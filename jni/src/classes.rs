//! The Java classes the library builds and throws (`fex.jni.RequestKeys`,
//! `Computed`, `LabelJoin`, `FexException`), bound once.
//!
//! Each binding keeps its class as a global reference and its constructor's
//! method id in a static, filled on first use; making an object then costs
//! one `NewObjectA`. `Env::new_object` with a class name looks the class up
//! on every call (the thread's context class loader, `Class.forName`, a Java
//! string for the name) and then its constructor: about 3 µs per object
//! (benches/README.md, "The library through JNI").
//!
//! The classes are found with `FindClass`, which, called from a native
//! method of `fex.jni.Native`, asks the class loader that loaded `Native`:
//! the one whose classes the Java side expects back. The statics live in
//! this copy of the library, and `Native` loads a copy per class loader, so
//! one never holds another loader's classes.

use jni::bind_java_type;

bind_java_type! {
    pub RequestKeys => fex.jni.RequestKeys,
    constructors {
        // The record's fields, in order, plus the environment.
        #[allow(clippy::too_many_arguments)]
        fn new(
            request_id: JString,
            user_id: JString,
            time_ms: jlong,
            refresh: jboolean,
            item_ids: JString[],
            payload: JString,
            rows: jint,
            model: JString,
        ),
    },
    hooks = {
        load_class = |env, _context, _initialize| env.find_class(jni::jni_str!("fex/jni/RequestKeys")),
    },
}

bind_java_type! {
    pub Computed => fex.jni.Computed,
    constructors {
        fn new(payload: JString, joined: jbyte[], samples: jbyte[], rows_written: jlong),
    },
    hooks = {
        load_class = |env, _context, _initialize| env.find_class(jni::jni_str!("fex/jni/Computed")),
    },
}

bind_java_type! {
    pub LabelJoin => fex.jni.LabelJoin,
    constructors {
        fn new(
            requests_back: jint,
            after_ms: jlong,
            watermark_delay_ms: jlong,
            retention_ms: jlong,
            has_refresh: jboolean,
            late_actions: JString,
        ),
    },
    hooks = {
        load_class = |env, _context, _initialize| env.find_class(jni::jni_str!("fex/jni/LabelJoin")),
    },
}

bind_java_type! {
    pub FexException => fex.jni.FexException,
    constructors {
        fn new(message: JString, offset: jlong),
    },
    hooks = {
        load_class = |env, _context, _initialize| env.find_class(jni::jni_str!("fex/jni/FexException")),
    },
}

//! Python values ⇄ JSON values: the one conversion every other module goes through, so
//! messages, tools, parts and records keep the library's own serde shapes exactly.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// Deeper than this is refused: a list that contains itself would otherwise recurse
/// until the stack overflows, which kills the interpreter rather than raising.
const MAX_DEPTH: usize = 128;

/// A Python value as JSON: `None`, `bool`, `int`, `float`, `str`, `os.PathLike` (its
/// string), lists, tuples and dicts with string keys. `what` names the argument in the
/// error.
pub(crate) fn to_json(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    convert(obj, what, 0)
}

fn convert(obj: &Bound<'_, PyAny>, path: &str, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "{path}: nested more than {MAX_DEPTH} levels deep (a value that contains itself?)"
        )));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    // `bool` before `int`: in Python a bool is an int.
    if let Ok(b) = obj.downcast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(PyValueError::new_err(format!(
            "{path}: the integer {obj} does not fit in 64 bits"
        )));
    }
    if let Ok(f) = obj.downcast::<PyFloat>() {
        return Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| PyValueError::new_err(format!("{path}: {obj} is not a finite number")));
    }
    if let Ok(s) = obj.downcast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if let Ok(d) = obj.downcast::<PyDict>() {
        let mut map = Map::new();
        for (k, v) in d.iter() {
            let Ok(key) = k.downcast::<PyString>() else {
                return Err(PyTypeError::new_err(format!(
                    "{path}: dict keys must be str, not {}",
                    type_name(&k)
                )));
            };
            let key = key.to_cow()?.into_owned();
            let value = convert(&v, &format!("{path}[{key:?}]"), depth + 1)?;
            map.insert(key, value);
        }
        return Ok(Value::Object(map));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for (i, item) in obj.try_iter()?.enumerate() {
            items.push(convert(&item?, &format!("{path}[{i}]"), depth + 1)?);
        }
        return Ok(Value::Array(items));
    }
    // A path (`os.PathLike`: a run config dict's `log: tmp_path / "run"`) as its string.
    if let Ok(fspath) = obj.call_method0("__fspath__") {
        if let Ok(s) = fspath.downcast::<PyString>() {
            return Ok(Value::String(s.to_cow()?.into_owned()));
        }
    }
    Err(PyTypeError::new_err(format!(
        "{path}: a {} cannot be sent as JSON (use None, bool, int, float, str, os.PathLike, list or dict)",
        type_name(obj)
    )))
}

/// A JSON value as the Python value `json.loads` would give.
pub(crate) fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}

/// Any serde value as its Python form.
pub(crate) fn serde_to_py<'py, T: serde::Serialize>(
    py: Python<'py>,
    value: &T,
) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_value(value)
        .map_err(|e| PyValueError::new_err(format!("cannot convert to Python: {e}")))?;
    to_py(py, &json)
}

/// Bytes as Python `bytes`.
pub(crate) fn bytes<'py>(py: Python<'py>, b: &[u8]) -> Bound<'py, PyAny> {
    PyBytes::new(py, b).into_any()
}

/// The Python type's name, for messages.
pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".to_string())
}

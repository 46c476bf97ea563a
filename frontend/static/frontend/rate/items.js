// What the rating page and the quiz both show: one side of a pair (a caption or a
// picture), and the notice line above the pair.

export function itemNode(item) {
  const box = document.createElement("figure");
  box.className = `item ${item.type}`;
  if (item.type === "caption") {
    const text = document.createElement("p");
    text.textContent = item.text;
    box.append(text);
  } else {
    const frame = document.createElement("div");
    frame.className = "frame";
    const img = document.createElement("img");
    img.alt = "Picture to compare";
    img.decoding = "async";
    reserveBox(img, item);
    img.src = item.url;
    frame.append(img);
    box.append(frame);
  }
  return box;
}

/** Give a picture of known size its box before the file arrives, so the slider below it
 * does not move under a click while pictures load: the stylesheet sizes a ``.reserved``
 * picture from ``--width`` (its file's width) and ``--aspect`` (width over height) within
 * the ``--picture-max`` height set on its item. A picture of unknown size gets none of
 * these (a reused <img> loses the last picture's): the stylesheet gives its frame a box. */
export function reserveBox(img, { width, height }) {
  if (!(width && height)) {
    img.classList.remove("reserved");
    img.removeAttribute("width");
    img.removeAttribute("height");
    for (const property of ["--width", "--aspect", "aspect-ratio"]) img.style.removeProperty(property);
    return;
  }
  img.width = width;
  img.height = height;
  img.style.setProperty("--width", `${width}px`);
  img.style.setProperty("--aspect", String(width / height));
  img.style.aspectRatio = `${width} / ${height}`;
  img.classList.add("reserved");
}

/** Show ``text`` in the notice line (an empty text hides it); ``kind`` "error" marks it. */
export function showNoticeIn(notice, text, kind = "info") {
  notice.hidden = !text;
  notice.textContent = text || "";
  notice.className = `notice ${kind === "error" ? "error" : ""}`;
}
